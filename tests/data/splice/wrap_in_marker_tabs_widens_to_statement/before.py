def pay(order):
	if order.total:
		charge(
			order.card,
			order.total,
		)
	return order
