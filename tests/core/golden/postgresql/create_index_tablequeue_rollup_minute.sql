CREATE INDEX tablequeue_rollup_minute ON tablequeue_rollup (minute);
