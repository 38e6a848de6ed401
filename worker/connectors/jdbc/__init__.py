"""PostgreSQL through JDBC's keys: Kafka into tables, and tables into Kafka."""
