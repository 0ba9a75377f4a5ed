UPDATE orders
SET lease_expires_at=dateadd(day, CAST(? / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(? - CAST(? / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((? - CAST(? / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(? - CAST(? / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime()))),
    updated_at=sysutcdatetime()
OUTPUT inserted.id
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status + '') = 'Leased'
  AND orders.lease_owner = ?;
