CREATE TABLE tablequeue_queues (
	name NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	table_name NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	category NVARCHAR(100) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	default_status NVARCHAR(64) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	settings NVARCHAR(max) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL CHECK (ISJSON(settings) = 1),
	schema_version INTEGER NOT NULL,
	created_at DATETIME2(6) NOT NULL,
	updated_at DATETIME2(6) NOT NULL,
	owner NVARCHAR(127) COLLATE Latin1_General_100_BIN2_UTF8 NULL,
	paused_at DATETIME2(6) NULL,
	max_leased INTEGER NULL,
	group_limit INTEGER NULL,
	group_hold BIT NULL,
	PRIMARY KEY (name),
	UNIQUE (table_name)
);
