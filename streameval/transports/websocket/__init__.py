"""WebSocket model servers: the attaching client and what each server message is."""
