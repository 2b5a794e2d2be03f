class Empty:
	pass
