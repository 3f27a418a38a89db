-- Monthly revenue per country for paid orders in 2025, largest first.
SELECT c.country,
       date_trunc('month', o.created_at) AS month,
       count(*)                          AS orders,
       round(sum(o.total_eur), 2)        AS revenue_eur
FROM orders AS o
JOIN customers AS c ON c.id = o.customer_id
WHERE o.status = 'paid'
  AND o.created_at >= DATE '2025-01-01'
  AND o.created_at <  DATE '2026-01-01'
GROUP BY c.country, month
HAVING sum(o.total_eur) > 1000
ORDER BY revenue_eur DESC;
