"""Tools a group offers: the catalog (persisted cache plus built-ins) and the built-ins."""
