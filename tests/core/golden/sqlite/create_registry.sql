CREATE TABLE tablequeue_queues (
	name VARCHAR(63) NOT NULL,
	table_name VARCHAR(63) NOT NULL,
	category VARCHAR(100) NOT NULL,
	default_status VARCHAR(64) NOT NULL,
	settings JSON NOT NULL,
	schema_version INTEGER NOT NULL,
	created_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	owner VARCHAR(127),
	paused_at DATETIME,
	max_leased INTEGER,
	group_limit INTEGER,
	group_hold BOOLEAN,
	PRIMARY KEY (name),
	UNIQUE (table_name)
);
