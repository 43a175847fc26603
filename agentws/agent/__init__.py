"""The agent: a model in a tool loop, turning one webhook event into one message."""
