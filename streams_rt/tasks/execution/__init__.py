"""Running a subtopology for one task: executable nodes built from the topology's graph, record
caches in front of the stores, and the runner that feeds input through them batch by batch."""
