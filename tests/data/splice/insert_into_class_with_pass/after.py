class Empty:
	def hello(self):
		return "hello"
