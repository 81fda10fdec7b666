"""The topology manager: merges the resource managers' NUMA hints and admits pods under its policy."""
