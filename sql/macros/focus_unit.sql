-- focus_unit: a unit as the interface or a rate card writes it, in FOCUS
-- unit format (minutes → Minutes, gigabytes → GB, gigabyte hours →
-- GB-Hours; other units with their words capitalized; '' → Units). focus
-- writes ConsumedUnit, PricingUnit and CommitmentDiscountUnit with it, the
-- same on usage, frozen and Correction rows.
CREATE OR REPLACE MACRO focus_unit(t) AS
    CASE lower(trim(t))
        WHEN '' THEN 'Units'
        WHEN 'second' THEN 'Seconds' WHEN 'seconds' THEN 'Seconds'
        WHEN 'minute' THEN 'Minutes' WHEN 'minutes' THEN 'Minutes'
        WHEN 'hour' THEN 'Hours' WHEN 'hours' THEN 'Hours'
        WHEN 'day' THEN 'Days' WHEN 'days' THEN 'Days'
        WHEN 'gigabyte' THEN 'GB' WHEN 'gigabytes' THEN 'GB' WHEN 'gb' THEN 'GB'
        WHEN 'terabyte' THEN 'TB' WHEN 'terabytes' THEN 'TB' WHEN 'tb' THEN 'TB'
        WHEN 'megabyte' THEN 'MB' WHEN 'megabytes' THEN 'MB' WHEN 'mb' THEN 'MB'
        WHEN 'gigabyte hour' THEN 'GB-Hours' WHEN 'gigabyte hours' THEN 'GB-Hours' WHEN 'gb hours' THEN 'GB-Hours' WHEN 'gb-hours' THEN 'GB-Hours'
        WHEN 'request' THEN 'Requests' WHEN 'requests' THEN 'Requests'
        ELSE array_to_string(list_transform(string_split(trim(t), ' '), w -> upper(w[1]) || w[2:]), ' ')
    END;
