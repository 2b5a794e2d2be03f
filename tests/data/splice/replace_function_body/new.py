def total(items):
    """Sum of prices, rounded up."""
    return math.ceil(sum(i.price for i in items))
