"""Spark integration: session set-up now; the data source, runtime start-up and executor glue
arrive with the Spark integration issue."""
