"""Network transports: live model servers over WebRTC, WebSocket, MJPEG/HTTP and MQTT,
request-response servers, programs on stdin, and models in process (docs/serve-formats.md).

One folder per transport (``webrtc/``, ``websocket/``, ``mjpeg/``, ``mqtt/``, ``segments/``,
``exec/``, ``inprocess/``), each with its ``transport.py`` (the attaching source) and, where
we serve that style too, its ``serve.py``. ``base`` holds what every network source shares
(key plan, admission, end of episode), ``ondemand`` what the styles that generate only when
asked share (``segments/``, ``exec/``); ``profiles/`` says how a family of servers talks, as
data; ``urls`` is the one scheme → source table behind ``attach URL``.
"""
