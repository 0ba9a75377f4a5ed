CREATE TABLE tablequeue_workers (
	worker_id NVARCHAR(200) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL, 
	queue NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL, 
	host NVARCHAR(253) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL, 
	pid INTEGER NOT NULL, 
	version NVARCHAR(64) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL, 
	heartbeat_seconds FLOAT NOT NULL, 
	started_at DATETIME2(6) NOT NULL, 
	last_seen DATETIME2(6) NOT NULL, 
	in_flight INTEGER NOT NULL, 
	processed BIGINT NOT NULL, 
	failed BIGINT NOT NULL, 
	PRIMARY KEY (worker_id)
);
