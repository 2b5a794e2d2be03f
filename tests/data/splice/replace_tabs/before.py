class Service:
	def start(self):
		if self.ready:
			return True
		return False

	def stop(self):
		pass
