"""Task-host side: the group member a host embeds to join the coordinator's group (and, later,
the task lifecycle itself)."""
