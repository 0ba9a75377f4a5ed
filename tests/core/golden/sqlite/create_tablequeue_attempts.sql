CREATE TABLE tablequeue_attempts (
	id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, 
	queue VARCHAR(63) NOT NULL, 
	tracking_id CHAR(32) NOT NULL, 
	message_pk BIGINT NOT NULL, 
	attempt INTEGER NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	at DATETIME NOT NULL, 
	owner VARCHAR(200), 
	correlation_id VARCHAR(100), 
	error TEXT
);
