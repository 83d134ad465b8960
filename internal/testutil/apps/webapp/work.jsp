<%-- Java 7 source: Jetty 9.4's JSP compiler defaults to source level 1.7.
     A page with some work in it, the kind a web application does per request: parse parameters, build and
     sort a collection, aggregate with BigDecimal, format text, render a table. Each request allocates a few
     hundred objects of a dozen classes. --%>
<%@ page contentType="text/html; charset=UTF-8" import="java.math.BigDecimal,java.math.RoundingMode,java.util.*" %>
<%!
    static final class Item implements Comparable<Item> {
        final String name;
        final String category;
        final BigDecimal price;
        final int quantity;

        Item(String name, String category, BigDecimal price, int quantity) {
            this.name = name;
            this.category = category;
            this.price = price;
            this.quantity = quantity;
        }

        BigDecimal total() { return price.multiply(BigDecimal.valueOf(quantity)); }

        @Override
        public int compareTo(Item o) {
            int c = total().compareTo(o.total());
            return c != 0 ? -c : name.compareTo(o.name);
        }
    }

    static final String[] CATEGORIES = {"books", "tools", "garden", "music", "games", "food", "toys"};

    static List<Item> items(long seed, int n) {
        Random r = new Random(seed);
        List<Item> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String name = Long.toString(r.nextLong() & Long.MAX_VALUE, 36);
            BigDecimal price = BigDecimal.valueOf(r.nextInt(100000), 2);
            items.add(new Item(name, CATEGORIES[r.nextInt(CATEGORIES.length)], price, 1 + r.nextInt(20)));
        }
        return items;
    }
%>
<%
    int n = 100;
    String param = request.getParameter("n");
    if (param != null) {
        n = Math.max(1, Math.min(10000, Integer.parseInt(param)));
    }
    long seed = System.nanoTime();
    List<Item> items = items(seed, n);
    Collections.sort(items);
    Map<String, BigDecimal> byCategory = new TreeMap<>();
    BigDecimal sum = BigDecimal.ZERO;
    for (Item it : items) {
        BigDecimal before = byCategory.get(it.category);
        byCategory.put(it.category, before == null ? it.total() : before.add(it.total()));
        sum = sum.add(it.total());
    }
    BigDecimal mean = sum.divide(BigDecimal.valueOf(n), 2, RoundingMode.HALF_EVEN);
%>
<html><head><title>work</title></head><body>
<h1><%= n %> items, total <%= sum %>, mean <%= mean %></h1>
<table>
<% for (Map.Entry<String, BigDecimal> e : byCategory.entrySet()) { %>
<tr><td><%= e.getKey() %></td><td><%= String.format("%,.2f", e.getValue()) %></td></tr>
<% } %>
</table>
<ol>
<% for (Item it : items.subList(0, Math.min(20, items.size()))) { %>
<li><%= it.name.toUpperCase(Locale.ROOT) %> (<%= it.category %>): <%= it.quantity %> x <%= it.price %> = <%= it.total() %></li>
<% } %>
</ol>
</body></html>
