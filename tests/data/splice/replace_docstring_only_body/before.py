class Protocol:
    def run(self):
        """Run the thing."""

    def stop(self):
        """Stop the thing."""
