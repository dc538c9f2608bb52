"""Network transports: live model servers over MQTT, WebRTC and MJPEG/HTTP (docs/serve-formats.md).

``live`` holds what every network source shares (key plan, admission, end of episode);
each transport module only connects, sends keys and decodes frames. ``urls`` maps an
``attach`` URL to its source.
"""
