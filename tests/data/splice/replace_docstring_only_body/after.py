class Protocol:
    def run(self):
        """Run the thing, now with a longer explanation.

        It still has no code.
        """

    def stop(self):
        """Stop the thing."""
