-- closed_months: the months closed now, one row per organization, month,
-- basis and granularity whose latest month_closes row for the organization
-- is a close (a reopen after it makes the month open again). The one rule
-- for "is this month closed", read by closed_month_adjustments and focus.
--
-- A month_closes row names its organization, or none (NULL) for a close
-- or reopen of every organization of the store at once: the api: form's
-- one, or a group's. A group close also records one row per organization,
-- at the same instant, holding that organization's figures; at a tie the
-- organization's own row is the one in force, and whole_store is true: the
-- group's row at that instant says the close was of every organization.
CREATE OR REPLACE VIEW closed_months AS
SELECT mc.id AS id, -- the close (month_closes.id); its figures of this organization are in month_close_figures
       o.name AS organization, -- the organization (organizations.name)
       mc.month AS month, -- first day of the closed month
       mc.basis AS basis, -- usage or reported
       mc.granularity AS granularity, -- the usage rows closed
       mc.acted_at AS acted_at, -- when it was closed, UTC
       mc.who AS who, -- who closed it
       mc.reason AS reason, -- why, as given
       bool_or(mc.organization IS NULL) OVER (PARTITION BY o.name, mc.month, mc.basis, mc.granularity, mc.acted_at, mc.action) AS whole_store -- closed by a close of every organization at once (the api: form's, or a group's)
FROM month_closes mc
-- The organizations a close can cover: the store's, those the ledger has
-- loaded windows of, and any a close names or froze figures of.
JOIN (SELECT name FROM organizations
      UNION SELECT organization FROM fetch_windows
      UNION SELECT organization FROM month_closes WHERE organization IS NOT NULL
      UNION SELECT organization FROM month_close_figures) o
  ON mc.organization IS NULL OR mc.organization = o.name
QUALIFY row_number() OVER (PARTITION BY o.name, mc.month, mc.basis, mc.granularity
                           ORDER BY mc.acted_at DESC, mc.organization IS NULL, mc.id DESC) = 1
    AND mc.action = 'close';
