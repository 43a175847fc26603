-- A cached tool whose name (<connector>_<action>) another listed tool of one
-- of its groups already has is kept but left out of listings; ``left_out``
-- says why (NULL: listed).

ALTER TABLE cached_tools ADD COLUMN left_out TEXT;
