"""Encoders: capture events -> transport-neutral messages (sink.message.Message payloads)."""
