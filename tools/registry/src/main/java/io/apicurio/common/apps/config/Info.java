package io.apicurio.common.apps.config;

import jakarta.enterprise.util.Nonbinding;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The 3.0.9 shape of Apicurio's documentation annotation for settings, whose {@code category} is
 * a {@link ConfigPropertyCategory}. The config-definitions jar pom.xml can get (3.0.6) declares
 * {@code category} as a String, so pom.xml unpacks that jar's other classes only.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.METHOD})
public @interface Info {
  @Nonbinding
  ConfigPropertyCategory category();

  @Nonbinding
  String description() default "";

  @Nonbinding
  String availableSince() default "";

  @Nonbinding
  String registryAvailableSince() default "";

  @Nonbinding
  String studioAvailableSince() default "";

  @Nonbinding
  String[] seeAlso() default {};

  @Nonbinding
  String[] dependsOn() default {};
}
