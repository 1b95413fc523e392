-- Prelude of the example job: views over `microdata` (registered by sdcflow).
-- The last view created here is the default source of every table.

-- The persons of region 13, for the microaggregation examples (a released microdata sample).
CREATE OR REPLACE VIEW region_13 AS
SELECT person_id, salary,
       CAST(substr(age_band, 1, 2) AS DOUBLE) + 2.0 AS age,   -- band midpoint, in years
       occupation, education, contract, sex
FROM microdata
WHERE substr(geo, 1, 2) = '13' AND salary > 0;

CREATE OR REPLACE VIEW employees AS
SELECT geo,
       substr(geo, 1, 2) AS region,       -- region (2)
       substr(geo, 1, 4) AS dept,         -- region (2) + department (2)
       substr(nace, 1, 1) AS section,     -- activity section letter
       nace, sex, age_band, occupation, contract, ent_id, salary, w
FROM microdata
WHERE salary > 0;
