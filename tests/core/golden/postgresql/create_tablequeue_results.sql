CREATE TABLE tablequeue_results (
	tracking_id UUID NOT NULL,
	queue VARCHAR(63) NOT NULL,
	message_pk BIGINT NOT NULL,
	message_id VARCHAR(400),
	status VARCHAR(64) NOT NULL,
	result JSONB,
	last_error TEXT,
	attempts INTEGER NOT NULL,
	processed_at TIMESTAMP WITH TIME ZONE NOT NULL,
	PRIMARY KEY (tracking_id)
);
