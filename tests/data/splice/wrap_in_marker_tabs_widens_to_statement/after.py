from letitloop import atomic_marker


def pay(order):
	if order.total:
		with atomic_marker("charge") as should_execute:
			if should_execute:
				charge(
					order.card,
					order.total,
				)
	return order
