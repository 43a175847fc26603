"""What the services share: the audit log, the change feed, the instances.

The change feed tells this process what others changed; the instances
are those sharing one database, each with its heartbeat.
"""
