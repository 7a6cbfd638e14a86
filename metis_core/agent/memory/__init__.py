"""Memory: MEMORY.md and USER.md, read into the system prefix and changed by the memory tool."""
