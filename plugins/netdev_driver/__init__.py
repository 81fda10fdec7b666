"""The netdev DRA driver: network links of one namespace published as DRA devices."""
