"""The webhook door: ``POST /hooks/<token>``, answered once the event is stored.

Sample deliveries an operator sends go through the same checks.
"""
