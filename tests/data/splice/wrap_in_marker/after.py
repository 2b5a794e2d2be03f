from letitloop import atomic_marker, durable, step


@durable(goal_id="notify")
def notify(order):
    total = step("price", price, order)
    with atomic_marker("send_email") as should_execute:
        if should_execute:
            # tell the customer, exactly once
            send_email(order.email, total)
            log.info("sent")
    return total
