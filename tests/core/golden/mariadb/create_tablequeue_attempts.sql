CREATE TABLE tablequeue_attempts (
	id BIGINT NOT NULL AUTO_INCREMENT,
	queue VARCHAR(63) NOT NULL,
	tracking_id UUID NOT NULL,
	message_pk BIGINT NOT NULL,
	attempt INTEGER NOT NULL,
	kind VARCHAR(16) NOT NULL,
	at DATETIME(6) NOT NULL,
	owner VARCHAR(200),
	correlation_id VARCHAR(100),
	error TEXT,
	PRIMARY KEY (id)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_nopad_bin;
