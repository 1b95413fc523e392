-- Prelude of the example job: a view over `microdata` (registered by sdcflow).
-- The last view created here is the default source of every table.
CREATE OR REPLACE VIEW employees AS
SELECT geo, nace, sex, age_band, occupation, contract, ent_id, salary, w
FROM microdata
WHERE salary > 0;
