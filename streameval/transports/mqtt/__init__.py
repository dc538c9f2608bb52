"""MQTT: our protocol through a broker (attach and serve), live scores and remote watching."""
