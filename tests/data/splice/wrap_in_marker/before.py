from letitloop import durable, step


@durable(goal_id="notify")
def notify(order):
    total = step("price", price, order)
    # tell the customer, exactly once
    send_email(order.email, total)
    log.info("sent")
    return total
