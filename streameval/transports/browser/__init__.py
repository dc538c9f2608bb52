"""``browser+URL``: a world model that only exists as a web page, driven in Chromium."""
