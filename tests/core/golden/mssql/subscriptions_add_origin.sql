ALTER TABLE tablequeue_subscriptions ADD origin NVARCHAR(16) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL DEFAULT 'spec';
