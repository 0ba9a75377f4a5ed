CREATE TABLE tablequeue_housekeeping (
	queue VARCHAR(63) NOT NULL,
	owner VARCHAR(200),
	lease_expires_at DATETIME(6),
	purged_at DATETIME(6),
	PRIMARY KEY (queue)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_nopad_bin;
