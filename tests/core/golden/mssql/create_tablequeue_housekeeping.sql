CREATE TABLE tablequeue_housekeeping (
	queue NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	owner NVARCHAR(200) COLLATE Latin1_General_100_BIN2_UTF8 NULL,
	lease_expires_at DATETIME2(6) NULL,
	purged_at DATETIME2(6) NULL,
	PRIMARY KEY (queue)
);
