"""SQL Server (rendered; runs where a server is given): the dialect, its MERGE and JSON indexes."""
