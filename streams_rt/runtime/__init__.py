"""The driver side without Spark: creating an application's internal topics, planning batches from
the coordinator's task status, the batch loop that runs them on the hosts, and a local application
(coordinator in-process, hosts as OS processes). The Spark data source builds on the same parts."""
