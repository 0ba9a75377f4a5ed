CREATE TABLE tablequeue_results (
	tracking_id UUID NOT NULL,
	queue VARCHAR(63) NOT NULL,
	message_pk BIGINT NOT NULL,
	message_id VARCHAR(400),
	status VARCHAR(64) NOT NULL,
	result JSON,
	last_error TEXT,
	attempts INTEGER NOT NULL,
	processed_at DATETIME(6) NOT NULL,
	PRIMARY KEY (tracking_id)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_nopad_bin;
