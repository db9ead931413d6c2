"""L1: devices, resources, step state and the executor that runs one partition."""
