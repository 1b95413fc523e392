-- Prelude of the example job: a view over `microdata` (registered by sdcflow).
-- The last view created here is the default source of every table.
CREATE OR REPLACE VIEW employees AS
SELECT geo,
       substr(geo, 1, 4) AS dept,   -- region (2) + department (2)
       nace, sex, age_band, occupation, contract, ent_id, salary, w
FROM microdata
WHERE salary > 0;
