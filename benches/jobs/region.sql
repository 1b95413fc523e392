-- The 7-variable cluster benchmark's geography at region level (2 characters of `geo`): the
-- commune level writes 1.5 and 2.6 billion cells at 20 M and 60 M rows, more than the disk holds.
CREATE VIEW v AS SELECT *, substr(geo, 1, 2) AS region FROM microdata;
