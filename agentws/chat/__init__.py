"""Chat: where the agent's messages go, behind one ``ChatSink`` protocol."""
