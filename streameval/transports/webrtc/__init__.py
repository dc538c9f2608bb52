"""WebRTC: the attaching peer (public style or ours), our server, and data-channel chunking."""
