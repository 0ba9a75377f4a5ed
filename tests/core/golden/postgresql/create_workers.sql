CREATE TABLE tablequeue_workers (
	worker_id VARCHAR(200) NOT NULL,
	queue VARCHAR(63) NOT NULL,
	host VARCHAR(253) NOT NULL,
	pid INTEGER NOT NULL,
	version VARCHAR(64) NOT NULL,
	heartbeat_seconds FLOAT NOT NULL,
	started_at TIMESTAMP WITH TIME ZONE NOT NULL,
	last_seen TIMESTAMP WITH TIME ZONE NOT NULL,
	in_flight INTEGER NOT NULL,
	processed BIGINT NOT NULL,
	failed BIGINT NOT NULL,
	PRIMARY KEY (worker_id)
);
