"""The broker `sparkherd broker` and `sparkherd up` start: Tansu or Apache Kafka in KRaft mode."""
