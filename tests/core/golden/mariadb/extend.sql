UPDATE orders
SET lease_expires_at=timestampadd(MICROSECOND, CAST(round(%(b_lease)s * 1000000) AS SIGNED INTEGER), utc_timestamp(6)),
    updated_at=utc_timestamp(6)
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (concat(orders.status, '')) = 'Leased'
  AND orders.lease_owner = %(b_owner)s;
