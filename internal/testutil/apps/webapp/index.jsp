<%-- The page the harness asks for to know that the application is up: it names the instance's token, so
     that a server of someone else's on the same port is never taken for ours. --%>
<%@ page contentType="text/plain; charset=UTF-8" %>jvmkit-app <%= System.getProperty("jvmkit.token") %>
